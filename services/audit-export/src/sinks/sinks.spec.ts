import { afterEach, describe, expect, it } from '@jest/globals';
import { appendFile, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { toLine } from '../feeds/map-record.js';
import { decision, record } from '../testing/decisions.js';
import { backoffMs } from './audit-sink.js';
import { RotatingFileSink } from './file-sink.js';
import { HttpSink } from './http-sink.js';

const lines = (n: number, partition = 0) => Array.from({ length: n }, (_, i) => toLine(record(decision(), partition, String(i)), 'ocsf'));

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0)) await fn();
});

describe('rotating file sink', () => {
  it('appends one line per record per partition and rotates by size without splitting a line', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gh-file-sink-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const batch = lines(10);
    const lineBytes = Buffer.byteLength(`${batch[0]?.text}\n`);
    const sink = new RotatingFileSink({ directory: dir, formats: ['ocsf'], maxBytes: lineBytes * 3 + 10 });
    await sink.write(batch.slice(0, 5));
    await sink.write(batch.slice(5));
    await sink.write(lines(2, 1));
    await sink.close();
    const files = (await readdir(dir)).sort();
    expect(files).toEqual(['ocsf-p0.000001.jsonl', 'ocsf-p0.000002.jsonl', 'ocsf-p0.000003.jsonl', 'ocsf-p0.000004.jsonl', 'ocsf-p1.000001.jsonl']);
    const all = (await Promise.all(files.filter((f) => f.startsWith('ocsf-p0')).map((f) => readFile(path.join(dir, f), 'utf8')))).join('');
    expect(all).toBe(batch.map((l) => `${l.text}\n`).join(''));
  });

  it('continues the newest file after a restart', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gh-file-sink-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const first = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await first.write(lines(2));
    await first.close();
    const second = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await second.write(lines(1));
    await second.close();
    expect(await readdir(dir)).toEqual(['ocsf-p0.000001.jsonl']);
    expect((await readFile(path.join(dir, 'ocsf-p0.000001.jsonl'), 'utf8')).trim().split('\n')).toHaveLength(3);
  });
});

describe('rotating file sink after a restart', () => {
  const fresh = async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'gh-file-sink-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    return dir;
  };
  const fileText = async (dir: string, prefix = 'ocsf-p0') => {
    const files = (await readdir(dir)).filter((f) => f.startsWith(prefix)).sort();
    return (await Promise.all(files.map((f) => readFile(path.join(dir, f), 'utf8')))).join('');
  };

  it('does not write again the batch it wrote but could not see acknowledged', async () => {
    const dir = await fresh();
    const batch = lines(10);
    const first = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await first.write(batch.slice(0, 6));
    await first.close(); // the process dies before the pipeline stores offset 6
    const second = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await second.write(batch.slice(4)); // the re-export from the stored offset 4
    await second.write(lines(2));
    await second.close();
    const text = await fileText(dir);
    expect(text.startsWith(batch.map((l) => `${l.text}\n`).join(''))).toBe(true);
    expect(text.split('\n').filter(Boolean)).toHaveLength(12);
    expect(second.skippedOnRecovery).toBe(2);
  });

  it('cuts a line the crash left half-written, then writes it whole once', async () => {
    const dir = await fresh();
    const batch = lines(4);
    const first = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await first.write(batch.slice(0, 3));
    await first.close();
    await appendFile(path.join(dir, 'ocsf-p0.000001.jsonl'), batch[3]!.text.slice(0, 40));
    const second = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await second.write(batch);
    await second.close();
    expect(await fileText(dir)).toBe(batch.map((l) => `${l.text}\n`).join(''));
    expect(second.skippedOnRecovery).toBe(3);
  });

  it('writes a record of another cluster at an offset it already wrote (another event, another line)', async () => {
    const dir = await fresh();
    const first = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await first.write(lines(3));
    await first.close();
    const second = new RotatingFileSink({ directory: dir, formats: ['ocsf'] });
    await second.write(lines(3)); // offsets 0..2 again, new event ids
    await second.close();
    expect((await fileText(dir)).split('\n').filter(Boolean)).toHaveLength(6);
    expect(second.skippedOnRecovery).toBe(0);
  });

  it('finds the batch across a rotation, and keeps each stream to its own files', async () => {
    const dir = await fresh();
    const batch = lines(9);
    const other = lines(2, 1);
    const lineBytes = Buffer.byteLength(`${batch[0]?.text}\n`);
    const options = { directory: dir, formats: ['ocsf'] as const, maxBytes: lineBytes * 2 + 10 };
    const first = new RotatingFileSink(options);
    await first.write([...batch.slice(0, 7), ...other]);
    await first.close();
    const second = new RotatingFileSink(options);
    await second.write([...batch.slice(2), ...other]);
    await second.close();
    expect(await fileText(dir)).toBe(batch.map((l) => `${l.text}\n`).join(''));
    expect(await fileText(dir, 'ocsf-p1')).toBe(other.map((l) => `${l.text}\n`).join(''));
    expect(second.skippedOnRecovery).toBe(7);
  });
});

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => void, port = 0): Promise<{ server: Server; url: string; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${address.port}/ingest`, port: address.port };
}

describe('HTTP sink', () => {
  it('retries 5xx with back-off and acknowledges on 2xx, posting the lines as NDJSON', async () => {
    const bodies: string[] = [];
    let calls = 0;
    const { server, url } = await listen((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        calls += 1;
        bodies.push(body);
        res.writeHead(calls < 3 ? 503 : 204).end();
      });
    });
    cleanup.push(() => new Promise((r) => server.close(r)));
    const batch = lines(3);
    await new HttpSink({ url, format: 'ocsf', baseDelayMs: 10, maxDelayMs: 50 }).write(batch);
    expect(calls).toBe(3);
    expect(bodies[2]).toBe(batch.map((l) => `${l.text}\n`).join(''));
  });

  it('rejects with AUDIT.SINK_UNAVAILABLE after the bounded attempts when nothing listens', async () => {
    const { server, url } = await listen((_req, res) => res.end());
    await new Promise((r) => server.close(r));
    await expect(new HttpSink({ url, format: 'ocsf', maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 10 }).write(lines(1))).rejects.toMatchObject({
      code: 'AUDIT.SINK_UNAVAILABLE',
      retryable: true,
    });
  });

  it('recovers when the server comes back on the same port between attempts', async () => {
    const first = await listen((_req, res) => res.end());
    const port = first.port;
    await new Promise((r) => first.server.close(r));
    let received = 0;
    setTimeout(() => {
      void listen((req, res) => {
        req.resume();
        req.on('end', () => {
          received += 1;
          res.writeHead(200).end();
        });
      }, port).then(({ server }) => cleanup.push(() => new Promise((r) => server.close(r))));
    }, 100);
    await new HttpSink({ url: first.url, format: 'ocsf', maxAttempts: 10, baseDelayMs: 50, maxDelayMs: 200 }).write(lines(2));
    expect(received).toBe(1);
  });

  it('back-off grows exponentially with jitter and is capped', () => {
    expect(backoffMs(1, 100, 5_000, () => 0)).toBe(50);
    expect(backoffMs(1, 100, 5_000, () => 0.999)).toBe(99);
    expect(backoffMs(4, 100, 5_000, () => 0)).toBe(400);
    expect(backoffMs(20, 100, 5_000, () => 0.999)).toBeLessThan(5_000);
  });
});

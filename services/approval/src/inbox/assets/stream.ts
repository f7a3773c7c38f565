import { type Api, type Change, isChange } from './api.js';

const MAX_BACKOFF_MS = 30_000;

/** What the live stream tells the page. */
export interface StreamEvents {
  /** The connection state, for the badge in the header. */
  state(state: 'connecting' | 'live' | 'offline', text: string): void;
  /** (Re)connected: whatever changed while the stream was down must be read again. */
  ready(reviewer: string | undefined): void;
  change(change: Change): void;
  /** A 401: the key is no longer accepted. */
  refused(): void;
}

/** One server-sent event: its name and its data parsed as JSON (null when it is not JSON). */
export function parseEvent(block: string): { readonly event: string; readonly data: unknown } {
  let event = 'message';
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') event = value;
    else if (name === 'data') data.push(value);
  }
  try {
    return { event, data: JSON.parse(data.join('\n')) as unknown };
  } catch {
    return { event, data: null };
  }
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/** Reads one connection until it ends; throws when it could not be opened. */
async function readStream(api: Api, signal: AbortSignal, events: StreamEvents, connected: () => void): Promise<'refused' | 'ended'> {
  const response = await api.events(signal);
  if (response.status === 401) return 'refused';
  if (response.status !== 200 || !response.body) throw new Error(`the event stream answered ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done || signal.aborted) return 'ended';
    buffer = (buffer + chunk.value).replace(/\r\n/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) !== -1) {
      const message = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (message.event === 'ready') {
        connected();
        events.state('live', 'live');
        const data = message.data as { reviewer?: unknown } | null;
        events.ready(typeof data?.reviewer === 'string' ? data.reviewer : undefined);
      } else if (message.event === 'approval' && isChange(message.data)) {
        events.change(message.data);
      }
    }
  }
}

/**
 * Follows `GET /v1/approval-events` until `signal` aborts (sign-out), reconnecting with jittered
 * exponential backoff up to 30 s.
 */
export async function listen(api: Api, signal: AbortSignal, events: StreamEvents): Promise<void> {
  let failures = 0;
  while (!signal.aborted) {
    events.state('connecting', 'connecting…');
    try {
      const connected = () => {
        failures = 0;
      };
      if ((await readStream(api, signal, events, connected)) === 'refused') {
        events.refused();
        return;
      }
    } catch {
      // A dropped connection or a sign-out; the loop decides which.
    }
    if (signal.aborted) return;
    failures += 1;
    const delay = Math.round(Math.min(MAX_BACKOFF_MS, 500 * 2 ** failures) * (0.5 + Math.random() / 2));
    events.state('offline', `reconnecting in ${Math.ceil(delay / 1000)} s`);
    await pause(delay, signal);
  }
}

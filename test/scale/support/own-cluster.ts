import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { createKafkaClient, kafkaSasl } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { ROOT } from '../../src/support/processes.js';

const run = promisify(execFile);
const script = path.join(ROOT, 'infra/kafka/cluster.sh');

/** Whether 127.0.0.1:`port` can be listened on now. */
async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  try {
    await once(server, 'listening');
  } catch {
    return false;
  }
  server.close();
  await once(server, 'close');
  return true;
}

/** A first port of six free ones in a row (the cluster's client and controller listeners). */
async function freePortBlock(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const base = 20_000 + 2 * Math.floor(Math.random() * 15_000);
    const free = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => portFree(base + i)));
    if (free.every(Boolean)) return base;
  }
  throw new Error('no six free ports in a row on 127.0.0.1');
}

/**
 * The replicated cluster of `infra/kafka/cluster.sh` (three KRaft nodes, replication 3,
 * min.insync.replicas 2), of one spec's own: its own state dir and ports, so that killing a node
 * disturbs neither the suite's broker nor anyone's dev broker. Reset at every start (fresh data,
 * users, passwords); `reset()` it in afterAll.
 */
export class OwnCluster {
  private constructor(
    readonly stateDir: string,
    readonly basePort: number,
  ) {}

  static async start(name: string): Promise<OwnCluster> {
    const cluster = new OwnCluster(path.join(ROOT, '.gatehouse', `scale-${name}`), await freePortBlock());
    await cluster.clusterSh('reset');
    await cluster.clusterSh('start');
    return cluster;
  }

  /** The bootstrap list: every node's client listener. */
  get brokers(): string[] {
    return [1, 2, 3].map((n) => `127.0.0.1:${this.basePort + 2 * (n - 1)}`);
  }

  /** Runs `cluster.sh <command...>` (its output names paths and timings, never a password). */
  async clusterSh(...args: string[]): Promise<string> {
    const env = { ...process.env, GATEHOUSE_STATE_DIR: this.stateDir, GATEHOUSE_KAFKA_CLUSTER_PORT: String(this.basePort) };
    try {
      const { stdout, stderr } = await run('bash', [script, ...args], { env, timeout: 300_000 });
      return `${stdout}${stderr}`;
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(`cluster.sh ${args.join(' ')} failed: ${`${stdout}${stderr}`.slice(-2_000)}`);
    }
  }

  /** SIGKILLs node `n` (1 to 3): a crash, no controlled shutdown. */
  killNode(n: 1 | 2 | 3): Promise<string> {
    return this.clusterSh('kill-node', String(n));
  }

  /** Starts node `n` again on its data. */
  startNode(n: 1 | 2 | 3): Promise<string> {
    return this.clusterSh('start-node', String(n));
  }

  /** Stops every node and deletes the data and passwords (safe when it is down). */
  reset(): Promise<string> {
    return this.clusterSh('reset');
  }

  passwordFile(user: string): string {
    return path.join(this.stateDir, 'cluster/secrets/kafka', `${user}.password`);
  }

  /** A client of the cluster authenticated as `user`; silent (a killed node makes every retry log). */
  kafka(clientId: string, user = 'admin'): Kafka {
    const password = readFileSync(this.passwordFile(user), 'utf8').replace(/\r?\n$/, '');
    return createKafkaClient({ brokers: this.brokers, clientId, sasl: kafkaSasl('scram-sha-512', user, password) }, () => undefined);
  }

  /** The environment that points a child process at the cluster as `user` (a password file, never the password). */
  env(user: string): Record<string, string> {
    return {
      GATEHOUSE_KAFKA_BROKERS: this.brokers.join(','),
      GATEHOUSE_KAFKA_SASL_MECHANISM: 'scram-sha-512',
      GATEHOUSE_KAFKA_USERNAME: user,
      GATEHOUSE_KAFKA_PASSWORD_FILE: this.passwordFile(user),
      GATEHOUSE_KAFKA_PASSWORD: '',
    };
  }
}

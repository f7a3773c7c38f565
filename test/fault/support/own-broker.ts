import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createKafkaClient, kafkaSasl } from '@gatehouse/kafka';
import { type Kafka } from 'kafkajs';
import { freePort, ROOT } from '../../src/support/processes.js';

const run = promisify(execFile);
const script = path.join(ROOT, 'infra/kafka/kafka.sh');

/**
 * A Kafka broker of one spec's own, started with `infra/kafka/kafka.sh` under its own state dir
 * and ports, so that stopping it mid-run disturbs neither the suite's shared broker nor anyone's
 * dev broker. The state dir is kept between runs (the ~46 MB of jars are copied once) and reset
 * (data, users, passwords) at every start, so each run begins from an empty, freshly formatted
 * node; `kafkaSh('reset')` in afterAll stops it and removes its data again.
 */
export class OwnBroker {
  private constructor(
    readonly stateDir: string,
    readonly port: number,
    private readonly controllerPort: number,
  ) {}

  /** Resets the state dir and starts the broker; `kafkaSh('reset')` it in afterAll (safe when it is already down). */
  static async start(name: string): Promise<OwnBroker> {
    const port = await freePort();
    let controllerPort = await freePort();
    while (controllerPort === port) controllerPort = await freePort();
    const broker = new OwnBroker(path.join(ROOT, '.gatehouse', `fault-${name}`), port, controllerPort);
    await broker.kafkaSh('reset');
    await broker.kafkaSh('start');
    return broker;
  }

  get brokers(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Runs `kafka.sh <command>` for this broker, asynchronously (the test's clients keep running meanwhile). */
  async kafkaSh(command: 'start' | 'stop' | 'reset' | 'status'): Promise<string> {
    const env = { ...process.env, GATEHOUSE_STATE_DIR: this.stateDir, GATEHOUSE_KAFKA_PORT: String(this.port), GATEHOUSE_KAFKA_CONTROLLER_PORT: String(this.controllerPort) };
    // kafka.sh prints paths and timings, never a password, so its output is safe to put in an error.
    try {
      const { stdout, stderr } = await run('bash', [script, command], { env, timeout: 240_000 });
      return `${stdout}${stderr}`;
    } catch (error) {
      const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
      throw new Error(`kafka.sh ${command} failed: ${`${stdout}${stderr}`.slice(-2_000)}`);
    }
  }

  /** Stops the broker, keeping its data: `kafkaSh('start')` brings the same node back. */
  stop(): Promise<string> {
    return this.kafkaSh('stop');
  }

  passwordFile(user: string): string {
    return path.join(this.stateDir, 'secrets/kafka', `${user}.password`);
  }

  /**
   * A client of this broker authenticated as `user` (kafka.sh generated its password). Its log is
   * silent: while the broker is stopped on purpose every retry would print a connection error.
   */
  kafka(clientId: string, user = 'admin'): Kafka {
    const password = readFileSync(this.passwordFile(user), 'utf8').replace(/\r?\n$/, '');
    return createKafkaClient({ brokers: [this.brokers], clientId, sasl: kafkaSasl('scram-sha-512', user, password) }, () => undefined);
  }

  /** The environment that points a child process at this broker as `user` (a password file, never the password). */
  env(user: string): Record<string, string> {
    return {
      GATEHOUSE_KAFKA_BROKERS: this.brokers,
      GATEHOUSE_KAFKA_SASL_MECHANISM: 'scram-sha-512',
      GATEHOUSE_KAFKA_USERNAME: user,
      GATEHOUSE_KAFKA_PASSWORD_FILE: this.passwordFile(user),
      GATEHOUSE_KAFKA_PASSWORD: '',
    };
  }
}

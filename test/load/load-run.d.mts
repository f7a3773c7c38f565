import { type ChildProcess } from 'node:child_process';

/** An agent process as `runLoadAgents` drives it (`startNode` of the system tests, `startNodeProcess` of the service runtime). */
export interface LoadAgentProcess {
  readonly child: ChildProcess;
  output(): string;
  exited(): Promise<number | null>;
}

/** What one agent process wrote at its end (see fixtures/load-agent.mjs). */
export interface AgentReport {
  readonly agent: string;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly published: readonly string[];
  readonly measuredDecisions: number;
  readonly auditFailures: number;
  readonly latenciesMs: readonly number[];
  readonly auditWriteMs: readonly number[];
  readonly outcomes: Readonly<Record<string, number>>;
}

/** The agents' reports added up. */
export interface LoadFigures {
  readonly agents: number;
  readonly outcomes: Readonly<Record<string, number>>;
  /** Every id a guard reported as published, warm-up included. */
  readonly published: readonly string[];
  /** Decisions in the common window. */
  readonly measured: number;
  readonly windowS: number;
  readonly perSecond: number;
  /** Timed calls in the window. */
  readonly calls: number;
  readonly latencyP50: number;
  readonly latencyP99: number;
  readonly auditWriteP50: number;
  readonly auditWriteP99: number;
  readonly failClosed: number;
}

export const LOAD_AGENT: string;

export function runLoadAgents(options: {
  readonly agents: number;
  readonly seconds: number;
  /** Where the go file and the reports are written: one directory per run. */
  readonly dir: string;
  readonly start: (script: string, args: readonly string[]) => LoadAgentProcess;
}): Promise<{ reports: AgentReport[]; warmUpMs: number }>;

export function loadFigures(reports: readonly AgentReport[]): LoadFigures;
export function agentProblems(reports: readonly AgentReport[]): string[];
export function exportPositions(url: string, headers: Readonly<Record<string, string>>): Promise<Record<string, string>>;
export function drainAudit(options: {
  readonly ends: ReadonlyMap<number, bigint>;
  readonly projected: () => Promise<Readonly<Record<string, string>>>;
  readonly exported: () => Promise<Readonly<Record<string, string>>>;
  readonly timeoutMs?: number;
}): Promise<number>;
export function projectedDecisions(url: string, headers: Readonly<Record<string, string>>): Promise<{ id: string; outcome: string }[]>;
export function deliveryProblems(options: {
  readonly published: readonly string[];
  readonly projected: readonly string[];
  readonly exported: readonly string[];
  readonly onLog: bigint;
}): string[];
export function describeLoad(figures: LoadFigures, run: { readonly seconds: number; readonly onLog: bigint; readonly warmUpMs: number; readonly drainMs: number }): string;

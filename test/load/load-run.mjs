// What the load test (guarded-agents.load.spec.ts) and the load benchmark (load.bench.mjs) share:
// driving the agent processes of fixtures/load-agent.mjs through one common window, adding up what
// they reported, waiting until audit-export has projected and exported the audit topic to its end,
// and checking that every decision is there exactly once. Plain JavaScript (types beside it, in
// load-run.d.mts) because the benchmark runs with Node from the built packages, and test/ has no build.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { URLSearchParams } from 'node:url';
import { waitFor } from '@gatehouse/kafka/testing';
import { duplicateIds, percentile, reached } from '@gatehouse/service-runtime/testing';

/** The agent process the load runs, many times over. */
export const LOAD_AGENT = path.join(import.meta.dirname, 'fixtures/load-agent.mjs');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const running = (agent) => agent.child.exitCode === null && agent.child.signalCode === null;

function failedAgent(agent) {
  return new Error(`agent exited ${agent.child.exitCode ?? agent.child.signalCode}: ${agent.output().slice(-2000)}`);
}

/** Waits until every agent printed LOAD_AGENT_READY (its warm-up done); fails on one that exited or at the deadline. */
async function untilReady(agents) {
  const ready = () => agents.filter((a) => a.output().includes('LOAD_AGENT_READY')).length;
  const deadline = Date.now() + 60_000 + agents.length * 10_000;
  while (ready() < agents.length) {
    const gone = agents.find((a) => !running(a));
    if (gone) throw failedAgent(gone);
    if (Date.now() > deadline) {
      const slow = agents.find((a) => !a.output().includes('LOAD_AGENT_READY'));
      throw new Error(`only ${ready()} of ${agents.length} agent processes warmed up in time; one still warming up said: ${slow?.output().slice(-500) || 'nothing'}`);
    }
    await sleep(50);
  }
}

/**
 * Starts `agents` agent processes with `start(script, args)`, waits until each warmed up (every
 * scenario once), gives them one common deadline `seconds` away (the go file in `dir`, renamed
 * into place so it is never read half-written), and returns what each reported at its end.
 * An agent that has not exited two minutes past the deadline is killed and reported.
 */
export async function runLoadAgents({ agents: count, seconds, dir, start }) {
  const wall = Date.now();
  const agents = Array.from({ length: count }, (_, index) => start(LOAD_AGENT, [JSON.stringify({ index, goFile: path.join(dir, 'go.json'), out: path.join(dir, `agent-${index}.json`) })]));
  await untilReady(agents);
  const warmUpMs = Date.now() - wall;
  writeFileSync(path.join(dir, 'go.tmp'), JSON.stringify({ endAt: Date.now() + seconds * 1_000 }));
  renameSync(path.join(dir, 'go.tmp'), path.join(dir, 'go.json'));
  let late;
  const lateness = new Promise((resolve) => (late = setTimeout(() => resolve('late'), seconds * 1_000 + 120_000)));
  const codes = await Promise.race([Promise.all(agents.map((a) => a.exited())), lateness]);
  clearTimeout(late);
  if (codes === 'late') {
    const stuck = agents.find(running);
    for (const agent of agents.filter(running)) agent.child.kill('SIGKILL');
    throw new Error(`an agent did not finish two minutes past the deadline; it printed: ${stuck?.output().slice(-1500)}`);
  }
  agents.forEach((agent, index) => {
    if (codes[index] !== 0) throw failedAgent(agent);
  });
  const reports = agents.map((_, index) => JSON.parse(readFileSync(path.join(dir, `agent-${index}.json`), 'utf8')));
  return { reports, warmUpMs };
}

/** Per `<scenario>:<expected|fail-closed|unexpected>`, how many calls of every agent ended so. */
function outcomesOf(reports) {
  const outcomes = {};
  for (const report of reports) for (const [key, n] of Object.entries(report.outcomes)) outcomes[key] = (outcomes[key] ?? 0) + n;
  return outcomes;
}

/** What the agents' reports add up to: the figures the load test prints and the benchmark records. */
export function loadFigures(reports) {
  const outcomes = outcomesOf(reports);
  const measured = reports.reduce((sum, r) => sum + r.measuredDecisions, 0);
  const windowS = (Math.max(...reports.map((r) => r.endedAt)) - Math.min(...reports.map((r) => r.startedAt))) / 1_000;
  const latencies = reports.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
  const writes = reports.flatMap((r) => r.auditWriteMs).sort((a, b) => a - b);
  return {
    agents: reports.length,
    outcomes,
    published: reports.flatMap((r) => r.published),
    measured,
    windowS,
    perSecond: measured / windowS,
    calls: latencies.length,
    latencyP50: percentile(latencies, 50),
    latencyP99: percentile(latencies, 99),
    auditWriteP50: percentile(writes, 50),
    auditWriteP99: percentile(writes, 99),
    failClosed: Object.entries(outcomes)
      .filter(([key]) => key.endsWith(':fail-closed'))
      .reduce((sum, [, n]) => sum + n, 0),
  };
}

/**
 * What the guards got wrong under load: a scenario decided otherwise than it must be (a call whose
 * audit write failed was refused, fail-closed, which is right but counted apart), or an agent
 * that measured no decision. Empty when none.
 */
export function agentProblems(reports) {
  const outcomes = outcomesOf(reports);
  return [
    ...Object.keys(outcomes)
      .filter((key) => key.endsWith(':unexpected'))
      .map((key) => `${outcomes[key]} calls ${key}`),
    ...reports.filter((r) => r.measuredDecisions === 0).map((r) => `${r.agent} measured no decision`),
  ];
}

/** The positions of the first export `GET /v1/exports` at `url` reports (none while it starts). */
export async function exportPositions(url, headers) {
  const [status] = await (await fetch(`${url}/v1/exports`, { headers })).json();
  return status?.positions ?? {};
}

/**
 * Waits until the projection's and then the export's positions (each read by its function) are at
 * `ends`, the audit topic's end offsets once no agent writes any more: everything either will ever
 * see. Returns how long it took, ms.
 */
export async function drainAudit({ ends, projected, exported, timeoutMs = 60_000 }) {
  const drain = Date.now();
  await waitFor(async () => (reached(await projected(), ends) ? true : undefined), { what: 'the projection to reach the end of the audit topic', timeoutMs, intervalMs: 200 });
  await waitFor(async () => (reached(await exported(), ends) ? true : undefined), { what: 'the SIEM export to reach the end of the audit topic', timeoutMs, intervalMs: 200 });
  return Date.now() - drain;
}

/** Every decision the query API at `url` lists (id and outcome), page by page, unfiltered. */
export async function projectedDecisions(url, headers) {
  const decisions = [];
  let cursor;
  do {
    const query = new URLSearchParams({ limit: '500', ...(cursor ? { cursor } : {}) });
    const res = await fetch(`${url}/v1/decisions?${query.toString()}`, { headers });
    if (res.status !== 200) throw new Error(`query API answered ${res.status}`);
    const page = await res.json();
    decisions.push(...page.items.map(({ id, outcome }) => ({ id, outcome })));
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return decisions;
}

const some = (ids) => `${ids.length} (${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''})`;

/**
 * Exactly once, by id: no id twice in the projection or the SIEM file; every record of the log is
 * one row and one line (`onLog`: the namespace is fresh, so the log holds only this run's
 * decisions); every id a guard reported as published is in both; nothing is exported that is not
 * projected. Returns what failed, empty when nothing did.
 */
export function deliveryProblems({ published, projected, exported, onLog }) {
  const problems = [];
  const twiceProjected = Object.keys(duplicateIds(projected));
  const twiceExported = Object.keys(duplicateIds(exported));
  if (twiceProjected.length > 0) problems.push(`ids twice in the projection: ${some(twiceProjected)}`);
  if (twiceExported.length > 0) problems.push(`ids twice in the SIEM file: ${some(twiceExported)}`);
  if (BigInt(projected.length) !== onLog) problems.push(`${projected.length} decisions projected, ${onLog} records on the log`);
  if (BigInt(exported.length) !== onLog) problems.push(`${exported.length} lines in the SIEM file, ${onLog} records on the log`);
  const projectedSet = new Set(projected);
  const exportedSet = new Set(exported);
  const unprojected = published.filter((id) => !projectedSet.has(id));
  const unexported = published.filter((id) => !exportedSet.has(id));
  const strays = exported.filter((id) => !projectedSet.has(id));
  if (unprojected.length > 0) problems.push(`published but not projected: ${some(unprojected)}`);
  if (unexported.length > 0) problems.push(`published but not exported: ${some(unexported)}`);
  if (strays.length > 0) problems.push(`exported but not projected: ${some(strays)}`);
  return problems;
}

const ms = (value) => `${value.toFixed(1)} ms`;

/** The line a load run prints: its figures, what was delivered, and how long the warm-up and the drain took. */
export function describeLoad(figures, { seconds, onLog, warmUpMs, drainMs }) {
  const f = figures;
  return (
    `load: ${f.agents} agents x ${seconds} s (window ${f.windowS.toFixed(1)} s): ${f.measured} decisions, ${f.perSecond.toFixed(1)} decisions/s sustained; ` +
    `guard latency p50 ${ms(f.latencyP50)}, p99 ${ms(f.latencyP99)} over ${f.calls} calls; ` +
    `audit write (linger + ack) p50 ${ms(f.auditWriteP50)}, p99 ${ms(f.auditWriteP99)} per decision; ` +
    `${f.published.length} published incl. warm-up, ${onLog} on the log, each once in the projection and the SIEM file; ${f.failClosed} failed closed; ` +
    `warm-up ${(warmUpMs / 1_000).toFixed(1)} s, drain ${drainMs} ms`
  );
}

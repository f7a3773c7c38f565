// @gatehouse/gatekeeper/hazeljs: what HazelJS agent-gatekeeper users bring, read into the
// gatekeeper without an agent framework: their invocation context, their policies (declarative and
// function-valued rules), their YAML or JSON configuration as a gatekeeper bundle, and their error
// classes. The CLI's HazelJS forms use it; the guard's `/hazeljs` facade (AgentGatekeeper, adapters,
// audit sinks, approvals) builds on it and re-exports it.
export * from './config.js';
export * from './context.js';
export * from './errors.js';
export * from './policies.js';

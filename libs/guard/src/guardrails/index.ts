// @gatehouse/guard/guardrails: the guardrail port and the shipped guardrails.
export * from './types.js';
export * from './schema-guardrail.js';

// @gatehouse/guard/guardrails: the guardrail port, its runner, check(), and the shipped adapters.
export * from './types.js';
export * from './schema-guardrail.js';
export { type GuardrailDecision, type GuardrailFault, type RunGuardrailsOptions, GUARDRAIL_FAULT_REASON, isTrip, runGuardrails, validateGuardrails, validateVerdict } from './run-guardrails.js';
export { type GuardrailCode, guardrailCode, guardrailReason, guardrailReasonCode } from './audit-guardrail.js';
export { GUARDRAIL_REASONS, type GuardrailReasonCode, isGuardrailReasonCode } from './reasons.js';
export { check, type CheckOptions, type CheckResult, type CheckSubject, GuardrailHaltError } from './check.js';
export { createInMemoryVerdictJournal, type InMemoryVerdictJournalOptions, type VerdictJournal } from './verdict-journal.js';
export { createMastraVerdictJournal, type MastraVerdictJournalOptions } from './mastra-verdict-journal.js';
export { type GuardrailRefusal } from './agent-guardrails.js';
export { createPiiGuardrail, luhnValid, type PiiAction, type PiiGuardrailOptions, type PiiRule } from './pii-guardrail.js';
export { createModerationGuardrail, type ModerationAction, type ModerationClassifier, type ModerationGuardrailOptions, type ModerationScore } from './moderation-guardrail.js';
export { type GuardrailFactory, guardrailByName, registerGuardrail, registeredGuardrails } from './registry.js';

// @gatehouse/guard/compat/duraton: Duraton's guardrail shape and lookup over gatehouse's guardrail port.
// The adapters, check() and the verdict journals are gatehouse's own (@gatehouse/guard/guardrails).
export { type DuratonGuardrail, type DuratonGuardrailInput, type DuratonVerdict, duratonGuardrail, getGuardrail } from './duraton-guardrail.js';

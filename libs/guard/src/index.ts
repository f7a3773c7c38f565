// @gatehouse/guard: what an agent process imports. The agent boundary, the tool
// boundary and the guardrail port land here (see the issues); this entry point
// re-exports the contracts an agent process needs to read decisions and errors.
export { GatehouseError, isGatehouseError } from '@gatehouse/contracts';

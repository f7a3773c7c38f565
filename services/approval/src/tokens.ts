/** Nest injection tokens of the approval service. */
export const APPROVAL_ENGINE = Symbol('APPROVAL_ENGINE');
export const APPROVAL_OPTIONS = Symbol('APPROVAL_OPTIONS');
export const REPLICA_CHANGES = Symbol('REPLICA_CHANGES');

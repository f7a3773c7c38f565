/** A `gatehouse policy` command line that cannot be run as given: exit 2 with the usage. */
export class PolicyUsageError extends Error {}

/** Injection tokens of the runtime module (strings, never class names). */
export const SERVICE_CONFIG = 'gatehouse:service-config';
export const DATA_SOURCE = 'gatehouse:data-source';
export const KAFKA = 'gatehouse:kafka';
export const KAFKA_ADMIN = 'gatehouse:kafka-admin';
/** The service's `DeadLetterPublisher` (closed by the runtime module at shutdown). */
export const DEAD_LETTERS = 'gatehouse:dead-letters';
/** The service's `ProjectionLogs`: which log each projection is bound to (routes refuse while one is not). */
export const PROJECTION_LOGS = 'gatehouse:projection-logs';
/** A scaled-out replica's forwarder of requests for other replicas' partitions (absent for a single replica). */
export const OWNER_FORWARDER = 'gatehouse:owner-forwarder';

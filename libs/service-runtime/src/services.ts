/** What every deployment (scripts, docker-compose, tests) must agree on about a service. */
export interface ServiceDescriptor {
  /** Short name, also the Kafka client id and log `service` field. */
  readonly name: 'policy' | 'approval' | 'idempotency-ledger' | 'audit-export';
  /** Default HTTP port on 127.0.0.1. */
  readonly port: number;
  /** PostgreSQL schema the service owns (in the `gatehouse` database). */
  readonly schema: string;
  /** PostgreSQL role the service connects as; it owns `schema`. */
  readonly dbRole: string;
}

/** The four services. Ports, schemas and roles live here and nowhere else. */
export const SERVICES = {
  policy: { name: 'policy', port: 4101, schema: 'policy', dbRole: 'gatehouse_policy' },
  approval: { name: 'approval', port: 4102, schema: 'approval', dbRole: 'gatehouse_approval' },
  'idempotency-ledger': { name: 'idempotency-ledger', port: 4103, schema: 'ledger', dbRole: 'gatehouse_ledger' },
  'audit-export': { name: 'audit-export', port: 4104, schema: 'audit_export', dbRole: 'gatehouse_audit_export' },
} as const satisfies Record<string, ServiceDescriptor>;

export type ServiceName = keyof typeof SERVICES;

/** The database all services share (each in its own schema). */
export const DATABASE_NAME = 'gatehouse';

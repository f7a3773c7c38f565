import 'reflect-metadata';
import { runService, SERVICES } from '@gatehouse/service-runtime';
import { LedgerModule } from './app.module.js';

await runService(SERVICES['idempotency-ledger'], (config) => LedgerModule.forRoot(config));

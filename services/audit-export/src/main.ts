import 'reflect-metadata';
import { runService, SERVICES } from '@gatehouse/service-runtime';
import { AuditExportModule } from './app.module.js';

await runService(SERVICES['audit-export'], (config) => AuditExportModule.forRoot(config));

import 'reflect-metadata';
import { runService, SERVICES } from '@gatehouse/service-runtime';
import { ApprovalModule } from './app.module.js';

await runService(SERVICES['approval'], (config) => ApprovalModule.forRoot(config));

import 'reflect-metadata';
import { runService, SERVICES } from '@gatehouse/service-runtime';
import { PolicyModule } from './app.module.js';

await runService(SERVICES['policy'], (config) => PolicyModule.forRoot(config));

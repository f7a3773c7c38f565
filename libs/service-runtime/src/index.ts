export * from './services.js';
export * from './config.js';
export * from './database.js';
export * from './health.js';
export * from './tokens.js';
export { HealthController } from './health.controller.js';
export { ServiceRuntimeModule, type ServiceRuntimeOptions } from './service-runtime.module.js';
export { runService, startService } from './bootstrap.js';
export { errorResponse, type ErrorBody, type ErrorMapping, GatehouseExceptionFilter } from './http-errors.js';

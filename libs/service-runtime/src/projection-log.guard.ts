import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { HealthController } from './health.controller.js';
import { type ProjectionLogs } from './projection/projection-logs.js';
import { PROJECTION_LOGS } from './tokens.js';

/**
 * Every HTTP route but /health refuses (503, PROJECTION.LOG_CHANGED or PROJECTION.LOG_UNVERIFIED)
 * while one of the service's projections is not bound to the log its rows came from: no answer
 * is read from rows of another log. Registered globally by the runtime module.
 */
@Injectable()
export class ProjectionLogGuard implements CanActivate {
  constructor(@Inject(PROJECTION_LOGS) private readonly logs: ProjectionLogs) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http' || context.getClass() === HealthController) return true;
    const refusal = this.logs.refusal();
    if (refusal) throw refusal;
    return true;
  }
}

import { AsyncLocalStorage } from 'node:async_hooks';
import { type INestApplication, type NestApplicationOptions } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { httpTelemetry } from './telemetry/http-telemetry.js';

type Closer = () => Promise<void>;

/** The closers registered by the provider factories of the app being created (see `createServiceApp`). */
const opening = new AsyncLocalStorage<Closer[]>();

/**
 * Registers how to close `resource`, opened by a provider factory, should the app it is created
 * for fail to start. Nest destroys nothing when a later provider's factory throws: without this,
 * a refused start (a topic whose retention is too short, an untrusted log) leaves the Kafka admin
 * connected, the database pool open and the projection-log watch running in the process that
 * tried. Outside `createServiceApp` it registers nothing. Returns `resource`.
 */
export function closeIfStartFails<T>(resource: T, close: (resource: T) => Promise<void>): T {
  opening.getStore()?.push(() => close(resource));
  return resource;
}

/**
 * `NestFactory.create` for a gatehouse service: when any provider fails to start, what the
 * providers before it opened (`closeIfStartFails`) is closed, newest first, and the start's
 * error is thrown. A successful app closes them itself, on `app.close()`. Every request gets a
 * server span and its duration (`httpTelemetry`).
 */
export async function createServiceApp(module: unknown, options: NestApplicationOptions): Promise<INestApplication> {
  const closers: Closer[] = [];
  try {
    const app = await opening.run(closers, () => NestFactory.create(module as Parameters<typeof NestFactory.create>[0], { ...options, abortOnError: false }));
    // First of every request's handlers (routes are added at listen): its span continues the caller's trace.
    app.use(httpTelemetry());
    return app;
  } catch (error) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    throw error;
  }
}

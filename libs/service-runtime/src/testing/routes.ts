import { type INestApplication, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { MetadataScanner, ModulesContainer } from '@nestjs/core';

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

const asList = (path: unknown): string[] => (Array.isArray(path) ? path.map(String) : [String(path ?? '')]);

/** `/base/path` from a controller path and a handler path, `:name` written as OpenAPI's `{name}`. */
function joinPath(base: string, path: string): string {
  const joined = [base, path]
    .map((part) => part.replace(/^\/+|\/+$/g, ''))
    .filter(Boolean)
    .join('/');
  return `/${joined}`.replace(/:(\w+)/g, '{$1}');
}

/**
 * Every route `app` serves, as `METHOD /path` with OpenAPI-style `{param}`s, sorted: read from the
 * controllers of every module the app was built from (the runtime's `/health` included), so a
 * controller registered anywhere counts.
 */
export function servedRoutes(app: INestApplication): string[] {
  const scanner = new MetadataScanner();
  const routes = new Set<string>();
  for (const module of app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype;
      if (typeof controller !== 'function') continue;
      const prototype = controller.prototype as Record<string, unknown>;
      for (const base of asList(Reflect.getMetadata(PATH_METADATA, controller))) {
        for (const name of scanner.getAllMethodNames(prototype)) {
          const handler = prototype[name] as object;
          const paths = Reflect.getMetadata(PATH_METADATA, handler) as unknown;
          const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
          if (paths === undefined || method === undefined) continue;
          for (const path of asList(paths)) routes.add(`${RequestMethod[method]} ${joinPath(base, path)}`);
        }
      }
    }
  }
  return [...routes].sort();
}

/** Every operation of an OpenAPI document, as `METHOD /path`, sorted (compare with `servedRoutes`). */
export function documentedRoutes(document: { readonly paths: Readonly<Record<string, object>> }): string[] {
  return Object.entries(document.paths)
    .flatMap(([path, item]) => Object.keys(item).filter((key) => HTTP_METHODS.has(key)).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}

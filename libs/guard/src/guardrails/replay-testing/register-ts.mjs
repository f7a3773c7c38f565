// Lets a child process run the guard's TypeScript sources as the tests do (@swc/core, as Jest's
// transform): `node --conditions=@gatehouse/source --import <this file> child.testing.ts`.
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);

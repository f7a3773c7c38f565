// Builds the inbox's browser assets into dist/inbox/assets: the TypeScript modules of
// src/inbox/assets compiled by tsconfig.inbox.json (DOM lib, no Node types), and the page and
// style sheet copied as they are. `npm run build` runs it after the service's own build, and
// Jest's global setup runs it before the specs (they serve these files from dist).
//
// A file is written only when its content changed, through a rename, and files no longer built
// are removed last: a service already serving the directory never reads a half-written file.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = import.meta.dirname;
const SOURCE = path.join(ROOT, 'src', 'inbox', 'assets');
const OUT = path.join(ROOT, 'dist', 'inbox', 'assets');
const COPIED = /\.(css|html)$/;

function writeIfChanged(file, text) {
  if (existsSync(file) && readFileSync(file, 'utf8') === text) return;
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, text);
  renameSync(temporary, file);
}

function compile() {
  const host = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  };
  const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.inbox.json'), {}, host);
  if (!config) throw new Error('tsconfig.inbox.json could not be read');
  const program = ts.createProgram({ rootNames: config.fileNames, options: config.options, projectReferences: config.projectReferences });
  const diagnostics = [...config.errors, ...ts.getPreEmitDiagnostics(program)];
  if (diagnostics.length > 0) {
    const format = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => '\n' };
    throw new Error(`the inbox's browser code does not compile:\n${ts.formatDiagnostics(diagnostics, format)}`);
  }
  const written = [];
  const emitted = program.emit(undefined, (file, text) => {
    writeIfChanged(file, text);
    written.push(path.basename(file));
  });
  if (emitted.emitSkipped) throw new Error("the inbox's browser code was not emitted");
  return written;
}

/** Compiles and copies the inbox's assets; throws with the compiler's diagnostics when they do not compile. */
export function buildInboxAssets() {
  const built = new Set(compile());
  for (const name of readdirSync(SOURCE).filter((n) => COPIED.test(n))) {
    writeIfChanged(path.join(OUT, name), readFileSync(path.join(SOURCE, name), 'utf8'));
    built.add(name);
  }
  // Another build's temporary file is its own to rename.
  for (const name of readdirSync(OUT)) if (!built.has(name) && !name.endsWith('.tmp')) rmSync(path.join(OUT, name), { force: true });
}

/** Jest's global setup. */
export default function setup() {
  buildInboxAssets();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildInboxAssets();

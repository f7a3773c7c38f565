import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SourceTextModule } from 'node:vm';
import { INBOX_ASSETS_DIR, loadInboxAssets } from './inbox.http.controller.js';

// The sources as written, and the build the service serves (Jest's global setup made it).
const SOURCES = path.join(import.meta.dirname, 'assets');
const source = (name: string) => readFileSync(path.join(SOURCES, name), 'utf8');
const SCRIPTS = readdirSync(SOURCES).filter((name) => name.endsWith('.ts'));
const PAGE = source('inbox.html');
const STYLES = source('app.css');
const built = loadInboxAssets();

describe('inbox assets', () => {
  it('keeps every script and style out of the page, as the content security policy demands', () => {
    const scripts = [...PAGE.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => [m[1]?.trim(), m[2]])).toEqual([['type="module" src="/inbox/app.js"', '']]);
    expect(PAGE).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|javascript:/i);
    expect(PAGE).toContain('<link rel="stylesheet" href="/inbox/app.css">');
  });

  it('serves the page and every built module, and each import resolves to one of them', () => {
    expect(built.page).toBe(PAGE);
    expect([...built.assets.keys()].sort()).toEqual(['app.css', ...SCRIPTS.map((name) => name.replace(/\.ts$/, '.js'))].sort());
    expect(built.assets.get('app.css')).toEqual({ contentType: 'text/css; charset=utf-8', body: STYLES });
    for (const [name, asset] of built.assets) {
      if (!name.endsWith('.js')) continue;
      expect([name, asset.contentType]).toEqual([name, 'text/javascript; charset=utf-8']);
      // Parses as a module (what `<script type="module">` loads) ...
      expect(() => new SourceTextModule(asset.body, { identifier: name })).not.toThrow();
      // ... whose imports are all relative and served.
      for (const [, specifier] of asset.body.matchAll(/\bfrom\s+'([^']+)'/g)) expect([name, specifier, built.assets.has(specifier?.replace(/^\.\//, '') ?? '')]).toEqual([name, specifier, true]);
    }
  });

  it('never writes markup from the browser code', () => {
    for (const name of SCRIPTS) expect([name, source(name)]).not.toEqual([name, expect.stringMatching(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/)]);
  });

  it('fetches nothing from another origin', () => {
    const served = [PAGE, STYLES, ...[...built.assets.values()].map((a) => a.body)];
    for (const asset of served) expect(asset).not.toMatch(/https?:\/\/|@import|url\(/);
  });

  it('never puts the key in a URL, a log or local storage', () => {
    for (const name of SCRIPTS) expect([name, source(name)]).not.toEqual([name, expect.stringMatching(/console\.|localStorage|[?&]key=/)]);
    // The key input has no name, so even a form submitted without the script would not carry it.
    expect(PAGE).toMatch(/<input id="api-key"(?![^>]*\bname=)[^>]*>/);
  });

  it('documents on the page each keyboard shortcut the script handles', () => {
    const keys = [...source('shortcuts.ts').matchAll(/\s'?([a-z/])'?: '(next|previous|approve|deny|edit|filter)'/g)].map((m) => m[1]);
    expect(keys.sort()).toEqual(['/', 'a', 'd', 'e', 'j', 'k']);
    for (const key of keys) expect(PAGE).toContain(`<kbd>${key}</kbd>`);
  });

  it('refuses to start without a browser build, saying how to make one', () => {
    expect(() => loadInboxAssets(path.join(INBOX_ASSETS_DIR, 'nowhere'))).toThrow(expect.objectContaining({ code: 'APPROVAL.INBOX_NOT_BUILT', message: expect.stringContaining('npm run build') }));
  });
});

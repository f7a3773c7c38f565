import { describe, expect, it } from '@jest/globals';
import { Script } from 'node:vm';
import { INBOX_PAGE } from './inbox-page.js';
import { INBOX_SCRIPT } from './inbox-script.js';
import { INBOX_STYLES } from './inbox-styles.js';

describe('inbox assets', () => {
  it('keeps every script and style out of the page, as the content security policy demands', () => {
    const scripts = [...INBOX_PAGE.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.map((m) => [m[1]?.trim(), m[2]])).toEqual([['src="/inbox/app.js" defer', '']]);
    expect(INBOX_PAGE).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=|javascript:/i);
    expect(INBOX_PAGE).toContain('<link rel="stylesheet" href="/inbox/app.css">');
  });

  it('ships a script that parses and never writes markup', () => {
    expect(() => new Script(INBOX_SCRIPT, { filename: 'app.js' })).not.toThrow();
    expect(INBOX_SCRIPT).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/);
  });

  it('fetches nothing from another origin', () => {
    for (const asset of [INBOX_PAGE, INBOX_SCRIPT, INBOX_STYLES]) expect(asset).not.toMatch(/https?:\/\/|@import|url\(/);
  });

  it('never puts the key in a URL, a log or local storage', () => {
    expect(INBOX_SCRIPT).not.toMatch(/console\.|localStorage|[?&]key=/);
    // The key input has no name, so even a form submitted without the script would not carry it.
    expect(INBOX_PAGE).toMatch(/<input id="api-key"(?![^>]*\bname=)[^>]*>/);
  });
});

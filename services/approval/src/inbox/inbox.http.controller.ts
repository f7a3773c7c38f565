import { Controller, Get, NotFoundException, Param, Res } from '@nestjs/common';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { GatehouseError } from '@gatehouse/contracts';

/**
 * Headers of every inbox response: the page runs only its own script and style, talks only to
 * this service, cannot be framed, and leaks no referrer. Request data is shown as text, and
 * this policy is the second wall should that ever slip.
 */
export const INBOX_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * Where the browser build (`inbox-assets.build.mjs`) writes the page, its ES modules and its style
 * sheet: the package's `dist/inbox/assets`, found from this file, which sits two levels below the
 * package root whether the service runs from `dist` or (in the specs) from `src`.
 */
export const INBOX_ASSETS_DIR = path.resolve(import.meta.dirname, '..', '..', 'dist', 'inbox', 'assets');

/** The names an asset may have: the build's own flat file names, so no request can name another path. */
const ASSET_NAME = /^[a-z][a-z0-9-]*\.(js|css)$/;
const CONTENT_TYPES: Readonly<Record<string, string>> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };
const PAGE = 'inbox.html';

interface Asset {
  readonly contentType: string;
  readonly body: string;
}

/** The built inbox, read once: the page, and every script and style sheet beside it by name. */
export interface InboxAssets {
  readonly page: string;
  readonly assets: ReadonlyMap<string, Asset>;
}

/** Reads the browser build; refuses to start without one rather than serve a broken inbox. */
export function loadInboxAssets(dir = INBOX_ASSETS_DIR): InboxAssets {
  try {
    const assets = new Map<string, Asset>();
    for (const name of readdirSync(dir)) {
      const contentType = CONTENT_TYPES[path.extname(name)];
      if (ASSET_NAME.test(name) && contentType) assets.set(name, { contentType, body: readFileSync(path.join(dir, name), 'utf8') });
    }
    if (!assets.has('app.js') || !assets.has('app.css')) throw new Error('app.js or app.css is missing');
    return { page: readFileSync(path.join(dir, PAGE), 'utf8'), assets };
  } catch (cause) {
    throw new GatehouseError('APPROVAL.INBOX_NOT_BUILT', "the inbox's browser assets are not built: run `npm run build -w @gatehouse/approval-service`", {
      category: 'internal',
      details: { dir },
      cause,
    });
  }
}

interface AssetResponse {
  setHeader(name: string, value: string): void;
  send(body: string): void;
}

function serve(response: AssetResponse, contentType: string, body: string): void {
  for (const [name, value] of Object.entries(INBOX_HEADERS)) response.setHeader(name, value);
  response.setHeader('content-type', contentType);
  response.send(body);
}

/** `GET /inbox` and its assets: the reviewers' web inbox, served without a credential (its data calls need one). */
@Controller('inbox')
export class InboxController {
  private readonly built = loadInboxAssets();

  @Get()
  page(@Res() response: AssetResponse): void {
    serve(response, 'text/html; charset=utf-8', this.built.page);
  }

  @Get(':asset')
  asset(@Param('asset') name: string, @Res() response: AssetResponse): void {
    const asset = this.built.assets.get(name);
    if (!asset) throw new NotFoundException();
    serve(response, asset.contentType, asset.body);
  }
}

import { Controller, Get, Res } from '@nestjs/common';
import { INBOX_PAGE } from './inbox-page.js';
import { INBOX_SCRIPT } from './inbox-script.js';
import { INBOX_STYLES } from './inbox-styles.js';

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

interface AssetResponse {
  setHeader(name: string, value: string): void;
  send(body: string): void;
}

function serve(response: AssetResponse, contentType: string, body: string): void {
  for (const [name, value] of Object.entries(INBOX_HEADERS)) response.setHeader(name, value);
  response.setHeader('content-type', contentType);
  response.send(body);
}

/** `GET /inbox` and its two assets: the reviewers' web inbox, served without a credential (its data calls need one). */
@Controller('inbox')
export class InboxController {
  @Get()
  page(@Res() response: AssetResponse): void {
    serve(response, 'text/html; charset=utf-8', INBOX_PAGE);
  }

  @Get('app.js')
  script(@Res() response: AssetResponse): void {
    serve(response, 'text/javascript; charset=utf-8', INBOX_SCRIPT);
  }

  @Get('app.css')
  styles(@Res() response: AssetResponse): void {
    serve(response, 'text/css; charset=utf-8', INBOX_STYLES);
  }
}

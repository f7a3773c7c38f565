import { type NotificationKind, type ReviewerNotification } from './reviewer-notification.js';
import { type WebhookFormat } from './webhook-config.js';

/** The generic JSON body (`format: 'json'`), version 1. */
export interface WebhookJsonBody {
  readonly version: 1;
  readonly type: `approval.${NotificationKind}`;
  readonly eventId: string;
  readonly approvalId: string;
  readonly tenant: string;
  readonly connectorId: string;
  readonly status: ReviewerNotification['status'];
  readonly deadline: string;
  /** The deciding reviewer's id; null unless `type` is `approval.decided`. */
  readonly decidedBy: string | null;
  readonly time: string;
  /** The approval in the inbox: `<GATEHOUSE_APPROVAL_INBOX_URL>/inbox#approval=<approvalId>`. */
  readonly link: string;
}

/** The deep link into the inbox: the id rides in the fragment, which browsers never send to a server. */
export const inboxLink = (inboxUrl: string, approvalId: string): string => `${inboxUrl}/inbox#approval=${encodeURIComponent(approvalId)}`;

/** The generic body: every field of the notification and the link, nothing else. */
export function jsonBody(notification: ReviewerNotification, inboxUrl: string): WebhookJsonBody {
  return {
    version: 1,
    type: `approval.${notification.kind}`,
    eventId: notification.eventId,
    approvalId: notification.approvalId,
    tenant: notification.tenant,
    connectorId: notification.connectorId,
    status: notification.status,
    deadline: notification.deadline,
    decidedBy: notification.decidedBy ?? null,
    time: notification.time,
    link: inboxLink(inboxUrl, notification.approvalId),
  };
}

/** Slack's three control characters in `text` (its mrkdwn would otherwise read `<...>` as a link or mention). */
const slackText = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function headline(n: ReviewerNotification): string {
  switch (n.kind) {
    case 'requested':
      return `Approval requested: ${n.connectorId} (tenant ${n.tenant}), decide before ${n.deadline}`;
    case 'decided':
      return `Approval ${n.status} by ${n.decidedBy ?? 'a reviewer'}: ${n.connectorId} (tenant ${n.tenant})`;
    case 'expired':
      return `Approval expired undecided: ${n.connectorId} (tenant ${n.tenant})`;
    default: {
      const exhaustive: never = n.kind;
      return exhaustive;
    }
  }
}

/** A Slack-compatible message (incoming webhooks, `chat.postMessage`): `text` as the fallback, `blocks` with a button to the inbox. */
export function slackBody(notification: ReviewerNotification, inboxUrl: string): { text: string; blocks: unknown[] } {
  const text = slackText(headline(notification));
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: slackText(`${notification.approvalId} · ${notification.time}`) }] },
      {
        type: 'actions',
        elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in the inbox' }, url: inboxLink(inboxUrl, notification.approvalId) }],
      },
    ],
  };
}

/** The request body a target of `format` receives, as sent (and signed). */
export function webhookBody(notification: ReviewerNotification, format: WebhookFormat, inboxUrl: string): string {
  switch (format) {
    case 'json':
      return JSON.stringify(jsonBody(notification, inboxUrl));
    case 'slack':
      return JSON.stringify(slackBody(notification, inboxUrl));
    default: {
      const exhaustive: never = format;
      return exhaustive;
    }
  }
}

import { Logger } from '@nestjs/common';
import { type FoldLog } from '@gatehouse/kafka';

/** A `FoldLog` writing to Nest's logger under `context`: one line, extra fields as JSON. */
export function nestFoldLog(context: string): FoldLog {
  const log = new Logger(context);
  return (level, message, extra) => {
    const line = extra ? `${message} ${JSON.stringify(extra)}` : message;
    if (level === 'error') log.error(line);
    else if (level === 'warn') log.warn(line);
    else log.log(line);
  };
}

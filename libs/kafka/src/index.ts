export * from './config.js';
export * from './client.js';
export * from './records.js';
export * from './producer.js';
export * from './replay.js';
export * from './consumer.js';
export * from './provision.js';
export { decodeRecord } from './decode-record.js';
export { ConfigResourceTypes, Partitioners } from './kafkajs.js';

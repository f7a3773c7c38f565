// kafkajs is CommonJS: Node's ESM loader cannot see its named exports, so values come
// from the default export here. Types are imported from 'kafkajs' directly.
import kafkajs from 'kafkajs';

export const {
  Kafka,
  logLevel,
  CompressionTypes,
  Partitioners,
  ConfigResourceTypes,
  AclResourceTypes,
  AclOperationTypes,
  AclPermissionTypes,
  ResourcePatternTypes,
} = kafkajs;

import { type DynamicModule, Module } from '@nestjs/common';
import { CreateProjectionOffsets1764489600000, type ServiceConfig, ServiceRuntimeModule } from '@gatehouse/service-runtime';

/** Audit topic to SIEM feeds, hash-chain verification and a query API. */
@Module({})
export class AuditExportModule {
  static forRoot(config: ServiceConfig): DynamicModule {
    return {
      module: AuditExportModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: [CreateProjectionOffsets1764489600000] })],
    };
  }
}

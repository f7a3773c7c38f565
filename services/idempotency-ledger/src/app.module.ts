import { type DynamicModule, Module } from '@nestjs/common';
import { CreateProjectionOffsets1764489600000, type ServiceConfig, ServiceRuntimeModule } from '@gatehouse/service-runtime';

/** Exactly-once tool execution and shared rate limits across processes. */
@Module({})
export class LedgerModule {
  static forRoot(config: ServiceConfig): DynamicModule {
    return {
      module: LedgerModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: [CreateProjectionOffsets1764489600000] })],
    };
  }
}

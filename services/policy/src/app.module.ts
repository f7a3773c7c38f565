import { type DynamicModule, Module } from '@nestjs/common';
import { CreateProjectionOffsets1764489600000, type ServiceConfig, ServiceRuntimeModule } from '@gatehouse/service-runtime';

/** Versioned policy bundles: validate, version, publish; simulate and explain decisions. */
@Module({})
export class PolicyModule {
  static forRoot(config: ServiceConfig): DynamicModule {
    return {
      module: PolicyModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: [CreateProjectionOffsets1764489600000] })],
    };
  }
}

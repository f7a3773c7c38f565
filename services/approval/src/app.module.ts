import { type DynamicModule, Module } from '@nestjs/common';
import { CreateProjectionOffsets1764489600000, type ServiceConfig, ServiceRuntimeModule } from '@gatehouse/service-runtime';

/** Reviewer REST API and web inbox over the approvals topic. */
@Module({})
export class ApprovalModule {
  static forRoot(config: ServiceConfig): DynamicModule {
    return {
      module: ApprovalModule,
      imports: [ServiceRuntimeModule.forRoot({ config, migrations: [CreateProjectionOffsets1764489600000] })],
    };
  }
}

import { Controller, Get } from '@nestjs/common';
import { type OpenApiDocument } from '@gatehouse/service-runtime';
import { AUDIT_OPENAPI_DOCUMENT } from './openapi-document.js';

/** `GET /openapi.json`: the service's OpenAPI 3.1 document; public and static, like the approval service's. */
@Controller()
export class OpenApiController {
  @Get('openapi.json')
  document(): OpenApiDocument {
    return AUDIT_OPENAPI_DOCUMENT;
  }
}

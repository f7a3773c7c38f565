import { Controller, Get } from '@nestjs/common';
import { OPENAPI_DOCUMENT } from './openapi-document.js';

/** `GET /openapi.json`: the service's OpenAPI 3.1 document; public and static, like every gatehouse service's. */
@Controller()
export class OpenApiController {
  @Get('openapi.json')
  document(): typeof OPENAPI_DOCUMENT {
    return OPENAPI_DOCUMENT;
  }
}

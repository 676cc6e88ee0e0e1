import { generateOpenApiDocument } from 'trpc-to-openapi';
import { appRouter } from './router.ts';

export const API_BASE_PATH = '/api/v1/crm';

export function buildOpenApiDocument(baseUrl = API_BASE_PATH) {
  return generateOpenApiDocument(appRouter, {
    title: 'Headless CRM API',
    version: '1.0.0',
    baseUrl,
  });
}

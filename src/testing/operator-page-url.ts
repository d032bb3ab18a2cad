import { ADMIN_PATH } from '../operator/admin-access.js';

/** The address of a gateway's operator page (`/v1/admin`), e.g. a TestGateway's, for a browser or fetch. */
export function operatorPageUrl(gateway: { readonly url: string }): string {
  return `${gateway.url.replace(/\/+$/, '')}${ADMIN_PATH}`;
}

/**
 * Cursor paging, as the API does it: a listing answers one page of `data` and a
 * `next_page_token`; passing that token back gets the next page, and the last page
 * has none. `paginate` turns that into an async iterator over every item, fetching a
 * page only when the previous one is used up (the Python SDK's `follow_pages`).
 */

import { APIResponseError } from "./errors.js";

/** One page of a cursor-paged listing. */
export interface Page<Item> {
  data: Item[];
  next_page_token?: string | null | undefined;
}

/**
 * The item type of a page answer: what its `data` array holds; a JSON object while the
 * schema leaves the answer free-form (its `data` is then `unknown`).
 */
export type ItemOf<PageAnswer> = PageAnswer extends { data?: (infer Item)[] | null | undefined }
  ? unknown extends Item
    ? Record<string, unknown>
    : Item
  : Record<string, unknown>;

/** Every item of a paged listing: `fetchPage(token)` gets one page, from no token on. */
export async function* paginate<Item>(
  fetchPage: (pageToken: string | undefined) => Promise<Page<Item>>,
): AsyncGenerator<Item, void, undefined> {
  let token: string | undefined;
  do {
    const page = await fetchPage(token);
    yield* page.data;
    token = page.next_page_token ?? undefined;
  } while (token);
}

/** Read a page answer as a `Page`, checking the two members paging relies on. */
export function asPage<Item>(answer: unknown, what: string): Page<Item> {
  const page = answer as { data?: unknown; next_page_token?: unknown } | null;
  const token = page?.next_page_token;
  if (!page || !Array.isArray(page.data) || !(token == null || typeof token === "string")) {
    throw new APIResponseError(`${what}: expected a page ({data: [...], next_page_token})`);
  }
  return { data: page.data as Item[], next_page_token: token ?? undefined };
}

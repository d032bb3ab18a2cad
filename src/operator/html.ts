import { printable } from '../text/printable.js';

/** Markup made by this module's `html` template: inserted as it is, never escaped again. */
export class SafeHtml {
  constructor(readonly markup: string) {}

  toString(): string {
    return this.markup;
  }
}

/** What a template may interpolate: text is escaped, markup kept, lists joined, nothing (undefined, false) left out. */
export type HtmlValue = SafeHtml | string | number | undefined | null | false | readonly HtmlValue[];

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/**
 * Text as inert HTML, in content and in quoted attributes alike. Control and bidi characters
 * are shown as escapes: a chat name must not reorder what is shown beside it.
 */
export function escapeHtml(text: string): string {
  return printable(text).replace(/[&<>"'`]/g, (char) => ESCAPES[char]!);
}

/** The one way markup is made here: every interpolated value is escaped unless it is SafeHtml already. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let markup = strings[0]!;
  values.forEach((value, index) => {
    markup += render(value) + strings[index + 1]!;
  });
  return new SafeHtml(markup);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.markup;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === undefined || value === null || value === false) return '';
  return escapeHtml(String(value));
}

/** The embedded store's file in the data dir, for the gateway and the commands that read it. */
export const STORE_FILE = 'threadline.db';

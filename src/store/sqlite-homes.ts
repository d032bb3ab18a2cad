import type Database from 'better-sqlite3';
import { preparer } from './sqlite-database.js';

/** The statements of each platform's home channel. */
export function homeOperations(db: Database.Database) {
  const statement = preparer(db);
  const getHome = statement<{ destination: string }>('SELECT destination FROM homes WHERE platform = ?');
  const setHome = statement(
    'INSERT INTO homes (platform, destination) VALUES (?, ?) ON CONFLICT (platform) DO UPDATE SET destination = excluded.destination',
  );
  return {
    getHome: (platform: string): string | undefined => getHome.get(platform)?.destination,
    setHome(platform: string, destination: string): void {
      setHome.run(platform, destination);
    },
  };
}

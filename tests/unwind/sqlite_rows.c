// sqlite_rows N [keep]: loads N rows into an in-memory SQLite database (Debian's libsqlite3,
// built without frame pointers, with glibc, both dynamic) and builds an index on them, between
// the markers fsync(1001) and fsync(1002), then closes the database, or with `keep` holds it
// until exit, as a program that keeps its data does. Nearly all the pages it brings in are
// written by sqlite3 and glibc code called from load_rows and build_index.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void check(int rc, sqlite3 *db, const char *what)
{
	if (rc != SQLITE_OK && rc != SQLITE_DONE) {
		fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db));
		exit(1);
	}
}

__attribute__((noinline)) void load_rows(sqlite3 *db, long n)
{
	sqlite3_stmt *insert;

	check(sqlite3_exec(db, "CREATE TABLE t(id INTEGER, name TEXT, score REAL)", NULL, NULL, NULL),
	      db, "create");
	check(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), db, "begin");
	check(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?, ?)", -1, &insert, NULL), db, "prepare");
	for (long i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "row-%ld-%ld", i, (i * 7919) % 100003);
		sqlite3_bind_int64(insert, 1, (i * 2654435761L) % 1000003);
		sqlite3_bind_text(insert, 2, name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_double(insert, 3, i * 0.5);
		check(sqlite3_step(insert), db, "insert");
		sqlite3_reset(insert);
	}
	sqlite3_finalize(insert);
	check(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), db, "commit");
}

__attribute__((noinline)) void build_index(sqlite3 *db)
{
	check(sqlite3_exec(db, "CREATE INDEX t_name ON t(name)", NULL, NULL, NULL), db, "index");
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 0) : 20000;
	sqlite3 *db;

	fsync(1001);
	check(sqlite3_open(":memory:", &db), db, "open");
	check(sqlite3_exec(db, "PRAGMA cache_size=-200000", NULL, NULL, NULL), db, "pragma");
	load_rows(db, n);
	build_index(db);
	fsync(1002);
	if (argc < 3 || strcmp(argv[2], "keep") != 0)
		sqlite3_close(db);
	return 0;
}

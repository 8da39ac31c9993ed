// A C program whose memory is allocated for it inside a Debian shared library (GLib),
// from two of its own functions: load_catalog keeps about 9 MiB of entries in a
// GHashTable, make_index about 5 MiB of strings in a GPtrArray. Both are held until the
// program exits.
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

static __attribute__((noinline)) GHashTable *load_catalog(int items)
{
	GHashTable *catalog = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

	for (int i = 0; i < items; i++)
		g_hash_table_insert(catalog, g_strdup_printf("item-%08d", i),
				    g_strnfill(200, 'a' + i % 26));
	return catalog;
}

static __attribute__((noinline)) GPtrArray *make_index(int entries)
{
	GPtrArray *index = g_ptr_array_new_with_free_func(g_free);

	for (int i = 0; i < entries; i++)
		g_ptr_array_add(index, g_strdup_printf("%08d:%0120d", i, i));
	return index;
}

int main(int argc, char **argv)
{
	int scale = argc > 1 ? atoi(argv[1]) : 1;
	GHashTable *catalog = load_catalog(32 * 1024 * scale);
	GPtrArray *index = make_index(32 * 1024 * scale);

	printf("%u %u\n", g_hash_table_size(catalog), index->len);
	return 0;
}

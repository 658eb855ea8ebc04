/* SPDX-License-Identifier: MIT */
/*
 * The corpus replay driver: runs LLVMFuzzerTestOneInput over every file named on the command line
 * (directories are walked), so each CI run replays every corpus under the sanitizers. Not used
 * when building with -Dfuzzing=true, where libFuzzer provides main().
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "fuzz-main: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char chunk[65536];
	size_t n;
	while (mem && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		(void)fwrite(chunk, 1, n, mem);
	fclose(f);
	if (!mem || fclose(mem) != 0) {
		fprintf(stderr, "fuzz-main: %s: out of memory\n", path);
		return -1;
	}
	/* Hand over an exact-size copy so ASan sees any read past the input. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	(void)LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int replay(const char *path, unsigned *count)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		fprintf(stderr, "fuzz-main: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}

	struct dirent **names = NULL;
	int n = scandir(path, &names, NULL, alphasort);
	if (n < 0) {
		fprintf(stderr, "fuzz-main: %s: %s\n", path, strerror(errno));
		return -1;
	}
	int r = 0;
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && r == 0) {
			char *child = NULL;
			if (asprintf(&child, "%s/%s", path, names[i]->d_name) < 0)
				r = -1;
			else
				r = replay(child, count);
			free(child);
		}
		free(names[i]);
	}
	free(names);
	return r;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	for (int i = 1; i < argc; i++)
		if (replay(argv[i], &count) < 0)
			return EXIT_FAILURE;
	if (count == 0) {
		fprintf(stderr, "fuzz-main: no corpus files replayed\n");
		return EXIT_FAILURE;
	}
	printf("replayed %u inputs\n", count);
	return EXIT_SUCCESS;
}

/* SPDX-License-Identifier: MIT */
/* The floor for any CLI wrapper: a program that only execvp()s its arguments. */
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	execvp(argv[1], argv + 1);
	return 127;
}

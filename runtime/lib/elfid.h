/* crest: the GNU build ID of an ELF file (docs/engine.md, "Memory
 * mappings"), which tells a rebuilt program or library from the one a
 * checkpoint mapped even where their sizes are the same. */
#ifndef CREST_ELFID_H
#define CREST_ELFID_H

/* The build ID of the 64-bit little-endian ELF file open on FD as
   lowercase hex in OUT (at most 64 bytes of ID: 129 with its NUL).
   1: found; 0: not such an ELF file, or one without a build ID; -1: FD
   could not be read (errno). */
int
elf_build_id(int fd, char out[129]);

#endif

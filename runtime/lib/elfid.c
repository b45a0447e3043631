/* crest: the GNU build ID of an ELF file: its PT_NOTE segments read with
 * pread, the NT_GNU_BUILD_ID note ("GNU") found among their notes. */
#include <config.h>
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "elfid.h"

#define NOTES_MAX 4096 /* bytes of notes read from one segment (a build ID is 36) */
#define PHDRS_MAX 256

static int
read_at(int fd, void *buf, size_t len, uint64_t off)
{
  ssize_t n = pread(fd, buf, len, (off_t)off);
  if (n < 0)
    return -1;
  return (size_t)n == len ? 1 : 0;
}

/* The build ID among the notes in BUF (LEN bytes), as hex in OUT. */
static int
find_note(const unsigned char *buf, size_t len, char out[129])
{
  size_t off = 0;
  while (off + sizeof(Elf64_Nhdr) <= len)
    {
      Elf64_Nhdr nh;
      size_t name, desc;
      memcpy(&nh, buf + off, sizeof nh);
      name = off + sizeof nh;
      desc = name + (((size_t)nh.n_namesz + 3) & ~(size_t)3);
      if (desc > len || nh.n_descsz > len - desc)
        return 0;
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(buf + name, "GNU", 4) == 0
          && nh.n_descsz > 0 && nh.n_descsz <= 64)
        {
          for (size_t i = 0; i < nh.n_descsz; i++)
            snprintf(out + 2 * i, 3, "%02x", buf[desc + i]);
          return 1;
        }
      off = desc + (((size_t)nh.n_descsz + 3) & ~(size_t)3);
    }
  return 0;
}

int
elf_build_id(int fd, char out[129])
{
  Elf64_Ehdr eh;
  unsigned char notes[NOTES_MAX];
  int r = read_at(fd, &eh, sizeof eh, 0);
  out[0] = 0;
  if (r <= 0)
    return r;
  if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64
      || eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr)
      || eh.e_phnum == 0 || eh.e_phnum > PHDRS_MAX)
    return 0;
  for (unsigned i = 0; i < eh.e_phnum; i++)
    {
      Elf64_Phdr ph;
      size_t len;
      if ((r = read_at(fd, &ph, sizeof ph, eh.e_phoff + (uint64_t)i * sizeof ph)) <= 0)
        return r;
      if (ph.p_type != PT_NOTE || ph.p_filesz == 0)
        continue;
      len = ph.p_filesz < NOTES_MAX ? (size_t)ph.p_filesz : NOTES_MAX;
      if ((r = read_at(fd, notes, len, ph.p_offset)) <= 0)
        return r;
      if (find_note(notes, len, out))
        return 1;
    }
  return 0;
}

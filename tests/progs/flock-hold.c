/* flock-hold LOCKFILE READY: take an exclusive flock(2) on LOCKFILE, write
   READY, then sleep forever holding it: a container with a file lock, which
   a checkpoint must refuse (tests/host/migrate-archive.test). Static: the
   container's root file system has no libc. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
  int fd, r;
  if (argc != 3)
    return 2;
  fd = open(argv[1], O_RDWR | O_CREAT, 0600);
  if (fd < 0 || flock(fd, LOCK_EX) < 0)
    {
      perror(argv[1]);
      return 1;
    }
  r = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (r < 0 || write(r, "ready\n", 6) != 6)
    return 1;
  close(r);
  for (;;)
    pause();
}

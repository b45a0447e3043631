/* crest restorer blob: entry points at fixed offsets (see blob-abi.h). */
	.section .text.head, "ax"
	.globl blob_start
blob_start:
	/* offset 0: entry, rdi = struct blob_args *, rsp = the blob's stack */
	jmp blob_main
	.org 8
	/* offset 8: the engine points a stopped task here to issue a syscall */
	syscall
	int3
1:	jmp 1b
	.org 16
	/* offset 16: data the engine points injected calls at in a task whose
	   memory it may not write (one of another UID): rt_sigtimedwait's set
	   {SIGCHLD} and a zero timeout */
	.quad 1 << 16
	.quad 0, 0

	.text
	.globl blob_clone_thread
	.hidden blob_clone_thread
	.type blob_clone_thread, @function
/* long blob_clone_thread (void *clone_args, long size, struct blob_ops *child)
   The child starts on the stack named in clone_args, runs its own operations
   and stops at int3 for the engine to take over. */
blob_clone_thread:
	push %r12
	mov %rdx, %r12
	mov $435, %eax		/* clone3 */
	syscall
	test %rax, %rax
	jz 2f
	pop %r12
	ret
2:	and $-16, %rsp
	mov %r12, %rdi
	call blob_run_ops
3:	int3
	jmp 3b
	.size blob_clone_thread, .-blob_clone_thread

	.section .note.GNU-stack, "", @progbits

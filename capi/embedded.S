/* The archive of the SDM kernels (kernels/kernels.sdma), embedded in libsdm. Meson writes its
 * quoted path over the token after .incbin; runtime/embedded_archive.cpp finds the bytes through
 * these two hidden symbols (weak there, so a libsdm built without kernels has none). */
    .section .rodata.sdm_embedded_archive, "a"
    .balign 64
    .globl sdm_embedded_archive_begin
    .hidden sdm_embedded_archive_begin
sdm_embedded_archive_begin:
    .incbin SDM_EMBEDDED_ARCHIVE
    .globl sdm_embedded_archive_end
    .hidden sdm_embedded_archive_end
sdm_embedded_archive_end:
    .byte 0
    .section .note.GNU-stack, "", @progbits

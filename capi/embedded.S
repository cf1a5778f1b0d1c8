/* The archive of the SDM kernels (kernels/kernels.sdma), embedded in libsdm. Meson writes its
 * quoted path over the token after .incbin; runtime/platform/embedded_archive.cpp finds the bytes through
 * these two hidden symbols (weak there, so a libsdm built without kernels has none). The section
 * keeps its own name in libsdm (a .rodata.* one would merge into .rodata): `sdm info` reads the
 * archive out of the libsdm a host loads by it (kEmbeddedArchiveSection), so the section holds
 * the archive's bytes and nothing else. */
    .section .sdm_archive, "a"
    .balign 64
    .globl sdm_embedded_archive_begin
    .hidden sdm_embedded_archive_begin
sdm_embedded_archive_begin:
    .incbin SDM_EMBEDDED_ARCHIVE
    .globl sdm_embedded_archive_end
    .hidden sdm_embedded_archive_end
sdm_embedded_archive_end:
/* SDM_KEY_BEGIN: the public key that signed it (a .pub file's text), when the build signs. */
    .section .sdm_archive_key, "a"
    .globl sdm_embedded_key_begin
    .hidden sdm_embedded_key_begin
sdm_embedded_key_begin:
    .incbin SDM_EMBEDDED_KEY
    .globl sdm_embedded_key_end
    .hidden sdm_embedded_key_end
sdm_embedded_key_end:
/* SDM_KEY_END */
    .section .note.GNU-stack, "", @progbits

/* make test-sanitize: LD_PRELOADed so that no library is ever unloaded.
 * Open MPI loads its components (mca_*.so) with dlopen and unloads them in
 * MPI_Finalize; LeakSanitizer, reporting at exit, then cannot name the
 * module of what they allocated ("<unknown module>"), so scripts/lsan.supp
 * cannot match their allocations that live until exit by design. */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}

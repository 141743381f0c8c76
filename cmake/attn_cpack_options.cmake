# Read by cpack for each generator (CPACK_PROJECT_CONFIG_FILE): the .deb installs under /usr, the
# .tar.gz unpacks to a relocatable tree (bin/, lib/, share/) under its own folder.
if(CPACK_GENERATOR STREQUAL "DEB")
  set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
else()
  set(CPACK_PACKAGING_INSTALL_PREFIX "")
endif()

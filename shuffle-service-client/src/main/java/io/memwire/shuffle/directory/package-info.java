/**
 * The shuffle directory: per executor and shuffle, registered memory holding one fixed-size slot
 * per map output (map id, index-file and data-file region descriptors), so reducers locate blocks
 * with one-sided reads only; and the compact pointer to it that travels in a MapStatus location.
 */
package io.memwire.shuffle.directory;

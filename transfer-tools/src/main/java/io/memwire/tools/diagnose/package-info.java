/**
 * {@code memwire diagnose}: one report file for a bug report or an on-call engineer ({@link
 * Diagnose}).
 */
package io.memwire.tools.diagnose;

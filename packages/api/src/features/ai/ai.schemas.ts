import { AnalysisResult, BriefingResult, CoachingResult, PredictionResult } from '@crm/ai';
import { dataOf } from '../../schemas.ts';

/** The contract's AI shapes (sections 2.9-2.12), defined once in @crm/ai where the chains validate them. */
export const Analysis = AnalysisResult.meta({ id: 'AnalysisResult' });
export const Prediction = PredictionResult.meta({ id: 'PredictionResult' });
export const Briefing = BriefingResult.meta({ id: 'BriefingResponse' });
export const Coaching = CoachingResult.meta({ id: 'CoachingResponse' });

export const AnalysisResponse = dataOf(Analysis);
export const PredictionResponse = dataOf(Prediction);
export const BriefingResponse = dataOf(Briefing);
export const CoachingResponse = dataOf(Coaching);
